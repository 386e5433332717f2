"""Stage 4, reporting: the tables and the recommendation the routing studies write.

The operating report's tables (`operating_tables.py`) and its recommendation
(`recommendation.py`, with the command that ships it: `ship_command.py`); the cascade's
table (`cascade_report.py`); a fitted contract's cells and metadata (`contract_record.py`);
what a streamed route realised (`stream_report.py`). Reads the stages below; nothing below
reads it.
"""
