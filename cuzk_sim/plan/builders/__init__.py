"""Plan builders: the documented cuzk/supraseal engine and its variants."""
