"""Static analysis: parse → facts → link → regions → rules → report. Never imports torch."""
