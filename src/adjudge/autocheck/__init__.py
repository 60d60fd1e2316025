"""The auto check of spec 000: scores a text result 0-100 against a poster's rules. Pure."""
