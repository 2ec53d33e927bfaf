"""Provenance: where each span of an item's text came from (the tool
observations and other external content the agent read, the agent's own
reasoning, the user's task, or the distiller's own words), and which copied
spans tell the agent to do something. ``text`` tokenizes any script, ``spans``
computes the spans, ``imperative`` tells an instruction from a statement:
pure functions, no database. ``models`` stores an item's provenance and
``services`` computes and records it."""
