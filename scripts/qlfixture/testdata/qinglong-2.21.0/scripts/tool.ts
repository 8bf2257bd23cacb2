// cron: 0 0 * * 0
console.log('ts');
