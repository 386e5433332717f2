"""Error types that tell the user exactly what to fix.

A data error always names the file, the row and the field, so a user with a 15,000-row file
does not have to bisect it.
"""

from __future__ import annotations


class RunnerError(Exception):
    """Base class for errors the runner raises on purpose."""


class DataError(RunnerError, ValueError):
    """Bad input data: names the file, row and field at fault.

    ``ident`` is the row's id as written in the file, when it has one: a row number alone
    is hard to find in a file whose fields span lines, the id can be searched for.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        row: int | str | None = None,
        field: str | None = None,
        ident: str | None = None,
    ) -> None:
        where = []
        if file is not None:
            where.append(f"file {file}")
        if row is not None:
            where.append(f"row {row}" + (f" (id {ident!r})" if ident is not None else ""))
        elif ident is not None:
            where.append(f"id {ident!r}")
        if field is not None:
            where.append(f"field '{field}'")
        prefix = ", ".join(where)
        super().__init__(f"{prefix}: {message}" if prefix else message)
        self.file, self.row, self.field, self.ident = file, row, field, ident


class DataNotFoundError(RunnerError, FileNotFoundError):
    """Data is neither on disk nor reachable; the message says how to get it."""


class ConfigError(RunnerError, ValueError):
    """A configuration that cannot work, caught before any work starts."""
