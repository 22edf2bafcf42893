"""Calibration profiles (TOML) shipped with the package."""
