"""torchair without an NPU: find its sources (``locate``, ``fetch``), import them with stand-ins
for the native parts (``offline``), run its FX → GE translation on a target (``runner``), judge
what happened (``verdicts``), read its converter registry statically (``registry``) and print
the op support table (``ops_table``, ``command``). See docs/torchair.md."""
