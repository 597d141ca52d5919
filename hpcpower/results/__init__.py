"""Results: records, summaries, exports and plots."""
