"""HTML, Markdown and .properties reports built from stored results only. Not built yet."""
