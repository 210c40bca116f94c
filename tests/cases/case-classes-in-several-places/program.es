in long K case { K == 0 ? K0 : K == 7 ? K7 : Other }
out long Code

( K0() K7() { !>Code(7); }
| K7() K0() { !>Code(70); }
| Other()
)*
