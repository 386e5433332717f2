"""Reading text files line by line: UTF-8 per line, JSONL records, named lines.

Every text loader (JSONL, CSV, YAML) reads through `text_lines`, so a bad byte or a bad
JSON line is one `DataError` naming the file and the line.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from runner.data.row_issues import IssueLog

NOT_UTF8_FIELD = "<bytes>"
"""Field named by a line that is not valid UTF-8 (the problem is below the record)."""


def text_lines(
    path: str | Path,
    issues: IssueLog | None = None,
    start: int = 0,
    first_line: int = 1,
    max_lines: int | None = None,
) -> Iterator[tuple[int, str]]:
    """Yield ``(1-based line, text)`` of a UTF-8 text file, each line decoded on its own.

    Why one helper: every text loader (JSONL, CSV, YAML) reads through it, so a stray
    Latin-1 byte in a user's file is one `DataError` naming the file, the line and the byte
    offset, instead of a ``UnicodeDecodeError`` traceback, and ``skip_invalid`` can skip
    just that line. Lines end at ``\n``; the text keeps its line ending.

    Parameters
    ----------
    path : path
    issues : IssueLog, optional
        Where an undecodable line goes (raises unless skipping; a skipped line is not
        yielded). None: raise at once.
    start, first_line : int
        Byte offset to start reading at, and the number of the line that starts there (a
        streaming reader resumes mid-file, `runner.data.rag_stream`).
    max_lines : int, optional
        Stop after this many lines (all lines to the end when None).

    Raises
    ------
    DataError
        Field ``"<bytes>"``: the line, the offending byte, and its offset in the file and
        in the line (0-based byte offsets, as ``xxd`` / ``dd skip=`` count).
    """
    issues = issues if issues is not None else IssueLog(skip_invalid=False)
    offset = start
    with open(path, "rb") as handle:
        handle.seek(start)
        for number, raw in enumerate(handle, start=first_line):
            if max_lines is not None and number >= first_line + max_lines:
                break
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                bad = raw[exc.start : exc.end]
                issues.add(
                    str(path),
                    number,
                    NOT_UTF8_FIELD,
                    f"line {number} is not valid UTF-8: byte {bad[:1].hex(' ')} at byte "
                    f"offset {offset + exc.start} of the file (byte {exc.start} of the "
                    f"line; {exc.reason}); save the file as UTF-8",
                )
                text = None
            offset += len(raw)
            if text is not None:
                yield number, text


def read_text(path: str | Path) -> str:
    """The whole UTF-8 text of a file (strict: the first undecodable line raises, see
    `text_lines`)."""
    return "".join(text for _, text in text_lines(path))


def read_jsonl(
    path: Path,
    issues: IssueLog,
    start: int = 0,
    first_line: int = 1,
    max_lines: int | None = None,
) -> tuple[list[tuple[int, dict]], int]:
    """Parse a JSONL file (or ``max_lines`` lines of it from byte `start`, see `text_lines`)
    into ``(1-based line, record)`` pairs.

    A UTF-8 BOM before the first line is dropped (as for CSV). Whitespace-only lines hold
    no record and are counted, not parsed. A line that is not
    UTF-8 (field ``"<bytes>"``, `text_lines`), not JSON, or not a JSON object (field
    ``"<record>"``) is a problem for ``issues``.

    Returns
    -------
    records : list of (int, dict)
    blank_lines : int
    """
    records: list[tuple[int, dict]] = []
    blank = 0
    for number, line in text_lines(path, issues, start, first_line, max_lines):
        if number == 1:
            line = line.removeprefix("\ufeff")  # a BOM, as spreadsheet tools write it
        if not line.strip():
            blank += 1
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            issues.add(str(path), number, "<record>", f"line is not valid JSON: {exc}")
            continue
        if not isinstance(record, dict):
            issues.add(
                str(path),
                number,
                "<record>",
                f"line must be a JSON object, got {type(record).__name__}",
            )
            continue
        records.append((number, record))
    return records, blank
