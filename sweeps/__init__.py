"""The sweep engine (Optuna ask/tell over producer, broker and consumer parameters). Not built yet."""
