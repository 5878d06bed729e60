"""LSP handlers, one module per method or small group; each has `register(server)`.

Handlers are thin: find the document, get its cached analysis, call the pure function in
`fusion_switch.cfg`, convert the result with `convert.Converter`. Every handler is wrapped in
`safety.guarded`, so odd input gets an empty answer and a log line, never an error.
"""
