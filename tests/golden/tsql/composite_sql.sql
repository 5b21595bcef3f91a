create table [Person].[BusinessEntityAddress] (
    [BusinessEntityID] int not null,
    [AddressID] int not null,
    [AddressTypeID] int not null,
    [rowguid] uniqueidentifier not null,
    [ModifiedDate] datetime not null,
    constraint [PK_BusinessEntityAddress] primary key ([BusinessEntityID], [AddressID], [AddressTypeID])
)
go
-- I statement
insert into [Person].[BusinessEntityAddress]([BusinessEntityID], [AddressID], [AddressTypeID], [rowguid], [ModifiedDate]) values (?, ?, ?, ?, ?)
go
-- U statement
exec sp_executesql N'declare @primarykey_text nvarchar(2048) = N''''
update [Person].[BusinessEntityAddress] set
[BusinessEntityID] = @c1
,[AddressID] = @c2
,[AddressTypeID] = @c3
,[rowguid] = @c4
,[ModifiedDate] = @c5
where [BusinessEntityID] = @pkc1
  and [AddressID] = @pkc2
  and [AddressTypeID] = @pkc3
if @@rowcount = 0
    if @@microsoftversion>0x07320000
    begin
        set @primarykey_text = @primarykey_text + N''[BusinessEntityID] = '' + isnull(convert(nvarchar(100),@pkc1,1), N''NULL'') + N'', ''
        set @primarykey_text = @primarykey_text + N''[AddressID] = '' + isnull(convert(nvarchar(100),@pkc2,1), N''NULL'') + N'', ''
        set @primarykey_text = @primarykey_text + N''[AddressTypeID] = '' + isnull(convert(nvarchar(100),@pkc3,1), N''NULL'')
        if exists (select * from sys.all_parameters where object_id = object_id(N''sp_MSreplraiserror'') and [name] = N''@param3'')
            exec sp_MSreplraiserror @errorid=20598, @param1=N''[Person].[BusinessEntityAddress]'', @param2=@primarykey_text, @param3=13233
        else if object_id(N''sp_MSreplraiserror'') is not null
            exec sp_MSreplraiserror @errorid=20598
        else
        begin
            -- no replication procedures in this server: THROW 120598 (applier reads it as 20598)
            set @primarykey_text = N''The row was not found at the Subscriber when applying the replicated UPDATE command for Table ''''[Person].[BusinessEntityAddress]'''' with Primary Key(s): '' + @primarykey_text;
            throw 120598, @primarykey_text, 1;
        end
    end', N'@c1 int,@c2 int,@c3 int,@c4 uniqueidentifier,@c5 datetime,@pkc1 int,@pkc2 int,@pkc3 int', ?, ?, ?, ?, ?, ?, ?, ?
go
-- D statement
exec sp_executesql N'declare @primarykey_text nvarchar(2048) = N''''
delete [Person].[BusinessEntityAddress]
where [BusinessEntityID] = @pkc1
  and [AddressID] = @pkc2
  and [AddressTypeID] = @pkc3
if @@rowcount = 0
    if @@microsoftversion>0x07320000
    begin
        set @primarykey_text = @primarykey_text + N''[BusinessEntityID] = '' + isnull(convert(nvarchar(100),@pkc1,1), N''NULL'') + N'', ''
        set @primarykey_text = @primarykey_text + N''[AddressID] = '' + isnull(convert(nvarchar(100),@pkc2,1), N''NULL'') + N'', ''
        set @primarykey_text = @primarykey_text + N''[AddressTypeID] = '' + isnull(convert(nvarchar(100),@pkc3,1), N''NULL'')
        if exists (select * from sys.all_parameters where object_id = object_id(N''sp_MSreplraiserror'') and [name] = N''@param3'')
            exec sp_MSreplraiserror @errorid=20598, @param1=N''[Person].[BusinessEntityAddress]'', @param2=@primarykey_text, @param3=13234
        else if object_id(N''sp_MSreplraiserror'') is not null
            exec sp_MSreplraiserror @errorid=20598
        else
        begin
            -- no replication procedures in this server: THROW 120598 (applier reads it as 20598)
            set @primarykey_text = N''The row was not found at the Subscriber when applying the replicated DELETE command for Table ''''[Person].[BusinessEntityAddress]'''' with Primary Key(s): '' + @primarykey_text;
            throw 120598, @primarykey_text, 1;
        end
    end', N'@pkc1 int,@pkc2 int,@pkc3 int', ?, ?, ?
go
