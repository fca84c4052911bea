"""Turn what went wrong in a stage into findings: one classifier per file.

``unwrap`` finds the real cause inside torch's wrapper exceptions; ``graph_break`` and
``recompile`` read dynamo's graph-break and recompile reports; ``exception`` maps an exception
to a finding kind and code; ``codes`` lists graphlint's own trace codes.
"""
