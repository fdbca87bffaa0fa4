"""One repository's index runs, searches and reports, over the parts its engine is made of."""
