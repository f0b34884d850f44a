"""Reports from a study and its analysis: report.html (inline SVG charts), report.md, recommended .properties."""
