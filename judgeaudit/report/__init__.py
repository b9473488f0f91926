"""Reports, plots and the effects a run finds."""
