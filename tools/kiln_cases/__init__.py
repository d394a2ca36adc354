"""The case table of tools/gen_cases.py, one module per family (see spec.py for the format)."""
