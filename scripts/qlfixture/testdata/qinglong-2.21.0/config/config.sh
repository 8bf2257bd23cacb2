## QingLong config (fixture)
export RandomDelay="300"
export TG_BOT_TOKEN='123456:fixture-token'
export TG_USER_ID=10001
export PROXY_URL="http://$HOST:7890"
AutoAddCron="true"
export QL3_SECRET=1
