in long Go
out long Which

( Go(k)
  ( elapse[k seconds]() { !>Which(1); }
  | elapse[10 seconds]() { !>Which(2); }
  )
)*
