"""Widgets shared by the Session and Replay screens."""
