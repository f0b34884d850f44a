"""Ceiling model, diagnosis rules, recommendations and capacity planning (pure: files and numbers in)."""
