"""Cross-checks against peer libraries (pytrec_eval, ir-measures, ranx, rax, scipy)."""
