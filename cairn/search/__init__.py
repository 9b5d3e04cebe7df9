"""Search over what cairn remembers: hybrid search (`cairn.search.hybrid.search`), content search,
show and timeline. Import the modules themselves: this package stays empty so that importing the
models does not load Chroma.
"""
