"""The HTML report's inline SVG charts, one module each: the timeline of rounds per stream,
commands/s over time, and the benchmark's commands/s against N. Python computes the geometry;
a template of ``applier/report/templates/charts/`` draws it, autoescaped, and the chart comes
back as :class:`markupsafe.Markup` for a page to place."""
