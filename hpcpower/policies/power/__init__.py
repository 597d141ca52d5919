"""Power managers: which nodes sleep and wake."""
