"""The stages of the ladder, in the order they run. One module per stage."""
