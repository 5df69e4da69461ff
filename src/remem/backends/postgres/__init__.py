"""The PostgreSQL + pgvector back-end (``pip install 'remem[postgres]'``): one store per schema,
shared by many clients. psycopg and pgvector load only when such a store is opened."""
