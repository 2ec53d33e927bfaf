"""Paraphrased instructions: a lesson sentence that says, in other words, what a
directive sentence of the external content it was distilled from (a tool
result, an observation) told its reader to do. The semantic side of provenance:
the lexical side (copied spans) is memories.trust.provenance."""
