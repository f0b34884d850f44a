"""Ceiling model, diagnosis rules, recommendations and capacity planning. Not built yet."""
