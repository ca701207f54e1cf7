"""Renderers by format, each laying out the results model (``properties.commands.results``): ``text`` (the
terminal, 80 columns), ``markdown`` (report.md, the league, docs/gallery.md), ``html`` (a Jinja2 template:
index.html) and ``json`` (the versioned reports and their shipped JSON Schemas)."""
