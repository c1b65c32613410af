"""The layered knowledge base: plain-file entries under kb/, a derived Chroma index, scoped retrieval.

The only package that imports chromadb and sentence-transformers (both lazily).
"""
