"""The audits' statistics: win rates, PLS, bootstrap CIs, PU with partial OT, BOAT, prefix bias."""
