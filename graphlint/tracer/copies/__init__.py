"""Where graph mode adds copies: aten-level counts from the functionalized AOT graphs, GE-level
counts from torchair's graphs, and the ``copies`` report built from both.

The three entry points other parts call (all return plain JSON-serialisable dicts):
``count_aten_copies`` (the aot stage), ``count_ge_ops`` (the torchair stage) and
``build_copies_report`` (the trace report assembly). Import them from their modules; this
package imports nothing heavy so that ``graphlint copies --help`` stays fast.
"""
