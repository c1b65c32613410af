"""The agent: measure–revise loop, proposers (anthropic, offline, replay), optimization dropout, prompts."""
