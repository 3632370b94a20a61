"""models layer of simhpc."""
