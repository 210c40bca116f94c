"""The language front end: lexer, parser, syntax tree, types, checker, lowering to the IR."""
