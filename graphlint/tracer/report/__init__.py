"""The trace report: data first (``build`` assembles the design's JSON object), then writers
that only read it (``text``, ``html``), the CI comparison (``baseline``) and the static
cross-check (``static``)."""
