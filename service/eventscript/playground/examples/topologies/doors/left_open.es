// Alert when a door stays open for five minutes; one instance per door.
in {string door;} Opened group(Opened.door), {string door;} Closed group(Closed.door)
out {string door;} LeftOpen

( Opened()
  ( Closed()
  | elapse[5 minutes]() { !>LeftOpen({door: group[0]}); } Closed()
  )
)*
