"""Pure numpy mathematics: no I/O, no solver objects."""
