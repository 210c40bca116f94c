"""The external functions the language document's examples name, so that a declaration copied
from it runs as written (``language/external_functions.py`` resolves ``"eslib...."`` here when
no module of the user's own answers the name)."""
