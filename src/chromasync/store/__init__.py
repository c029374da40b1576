"""The vector store: Chroma, and nothing else imports chromadb."""
