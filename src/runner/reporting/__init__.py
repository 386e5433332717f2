"""Tables (Markdown, CSV, LaTeX) and figures from long-format cells, and run outputs."""
