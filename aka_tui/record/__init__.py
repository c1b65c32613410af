"""Session recording: one git repository per session, an append-only event log, replay and resume.

The only package that imports git (GitPython), lazily.
"""
