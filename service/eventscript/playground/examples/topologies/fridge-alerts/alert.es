// Stage 2 of the fridge alerts, one instance per fridge: a fridge that stays Warm for 10 minutes
// raises TooWarm (with the time it turned warm), and Recovered when it is Cold again. Stage 1
// debounces, so a single warm reading never starts the clock.

in {string fridge;} Warm group(Warm.fridge),
   {string fridge;} Cold group(Cold.fridge)

out {string fridge; time since;} TooWarm,
    {string fridge;} Recovered

(
  // a fixed set of fridges, each watched for good: eventscript: allow never-ends
  Cold()*
  Warm() { since = now(); }
  ( Cold()
  | elapse[10 minutes]()
    { !>TooWarm({fridge: group[0], since: since}); }
    Warm()*
    Cold() { !>Recovered({fridge: group[0]}); }
  )
)*
