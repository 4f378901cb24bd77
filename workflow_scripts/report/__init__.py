"""Results: median tables, group means, the BLURB score, spread, paired comparisons and plots."""
