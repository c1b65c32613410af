"""The Textual app (`aka` with no arguments): the only package that imports textual."""
