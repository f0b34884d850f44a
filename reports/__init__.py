"""Reports a person opens: one page builder (page: report.md and a self-contained report.html) and one chart
set (charts: matplotlib to inline SVG, each chart with its takeaway), used by the study report (study,
properties: the recommended .properties) and the comparison report (comparison, comparison_charts).
"""
