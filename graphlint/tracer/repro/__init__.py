"""`graphlint repro`: one standalone script that reproduces the first failure of a layer.

``command`` registers the sub-command; ``dump`` reads a trace's ``--dump`` folder (or makes one);
one module per layer makes that layer's repro and holds the check the repro runs (``torchair``,
``aot`` for aot and accuracy, ``dynamo`` for dynamo and model, ``capture``); ``graphs`` turns
FX graphs into code and shrinks them; ``signature`` is what every repro compares; ``writer``
puts the file together. A repro imports torch and graphlint, never a file of the user's project.
"""
