"""Input and output at the edges: reading input files within bounds (inputs),
the one-line input error (errors), quantities with units (units), outputs written
whole or not at all (outputs)."""
