in string Open group(Open), string Close group(Close)
out string Session

Open(o) Close() { !>Session(o); }
