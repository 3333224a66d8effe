void cbaselines_placeholder(void);
