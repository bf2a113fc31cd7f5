"""Drivers for the official bunqueue clients (see README.md)."""
