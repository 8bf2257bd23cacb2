// cron: 5 9 * * *
console.log('second');
