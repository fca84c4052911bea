# expect-check: none
"""A small package whose compiled entry point, model and layers live in different files.

run.py compiles the model with torchair's reduce-overhead config; model.py builds it from
layers.py through a relative import; the findings are in layers.py and helpers.py, reached only
through that chain.
"""
