"""apps layer of simhpc."""
