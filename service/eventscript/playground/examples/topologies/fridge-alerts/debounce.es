// Stage 1 of the fridge alerts: distance debouncing (document section 4.2), one instance per
// fridge. The fridge is reported Cold once its temperature is below 35 °F and Warm again once it
// is 45 °F or more: readings near the 40 °F boundary do not make the state flap. A fridge starts
// out Warm (to err on the side of reporting borderline temperatures as warm).

in {string fridge; double fahrenheit;} Temperature
   group(Temperature.fridge)
   case {
     Temperature.fahrenheit < 35.0 ? DefinitelyCold
       : Temperature.fahrenheit < 40.0 ? SlightlyCold
       : Temperature.fahrenheit < 45.0 ? SlightlyWarm
       : DefinitelyWarm
   }

out {string fridge;} Warm, {string fridge;} Cold

// a fixed set of fridges, each watched for good: eventscript: allow never-ends
{ !>Warm({fridge: group[0]}); } // initial report
( // Warm state
  ( . - DefinitelyCold() )* DefinitelyCold()
  { !>Cold({fridge: group[0]}); }
  // Cold state
  ( . - DefinitelyWarm() )* DefinitelyWarm()
  { !>Warm({fridge: group[0]}); }
)*
